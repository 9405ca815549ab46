// Tally tracker (served as-is). Commented copy + wire format: script.src.js
(function(){'use strict';
var w=window,d=document,n=navigator,L=location,H=history,P=w.tally;
if(P&&P._l)return;
var on=0,ok=0,pd=[],S,api,tz='',sd='',pa,hr,rf=d.referrer,ac=0,t0=0,mx=0,st=0,th,T,hs,lv,sv;
function F(f){return function(){try{return f.apply(this,arguments)}catch(e){}}}
function O(t,e,f,c){t.addEventListener(e,F(f),c)}
function R(){for(var x='';x.length<12;)x+=Math.random().toString(36).slice(2);return x.slice(0,12)}
function G(e,p,u){if(on){if(ok)B(e,p,u);else pd.push([e,p])}}
function K(m,o){if(m){o=o||{};var p={name:''+m},v=o.value;if(v===+v&&isFinite(v))p.value=v;if(o.props)p.props=o.props;if(o.revenue)p.revenue=o.revenue;G('event',p)}}
function E(m,o){o=o||{};var c=o._value;K(m,{value:c==null?o.value:c/100,props:o.props})}
T=w.tally={_l:1,track:F(K),pageview:F(function(){V(1)})};
if(!w.fathom)w.fathom={trackEvent:F(E),track:F(E),trackGoal:F(function(i,c){E(i,{_value:c})}),trackPageview:T.pageview};
try{var s=d.currentScript,A=function(k){return s.getAttribute('data-'+k)};
S=A('site');api=(A('api')||s.src.split('/').slice(0,3).join('/')).replace(/\/+$/,'');
on=S&&L.protocol!='file:'&&!(A('honor-dnt')=='true'&&(n.doNotTrack=='1'||n.globalPrivacyControl===true));hs=A('hash')=='true'}catch(e){}
if(!on)return;
try{if(localStorage.tally_ignore=='true')return}catch(e){}
try{tz=Intl.DateTimeFormat().resolvedOptions().timeZone||''}catch(e){}
function Q(t){var v,m;try{v=sessionStorage.getItem('_tally_s')}catch(e){}
m=/^(\w+)\.(\d+)$/.exec(v||sd);v=m&&t-m[2]<18e5?m[1]:R();sd=v+'.'+t;
try{sessionStorage.setItem('_tally_s',sd)}catch(e){}return v}
function B(e,p,u){try{var t=Date.now(),U=api+'/collect',y,x,b=JSON.stringify({s:S,sid:Q(t),e:e,p:p||{},u:u||L.href,r:rf,t:d.title,sw:screen.width,sh:screen.height,tz:tz,eid:R()+t.toString(36),ts:t,h:hs?1:void 0});
try{y=n.sendBeacon(U,new Blob([b],{type:'text/plain'}))}catch(e){}
if(!y){x=new XMLHttpRequest();x.open('POST',U);x.setRequestHeader('Content-Type','text/plain');x.send(b)}}catch(e){}}
function I(){if(t0){var x=Date.now();ac+=x-t0;t0=x}}
function C(){var h=d.documentElement.scrollHeight,v=w.innerHeight;mx=Math.max(mx,h>v?Math.min(100,Math.round((w.pageYOffset+v)/h*100)):100)}
function X(l){I();C();if(l?!lv:!st||ac>=1e3){st=1;lv=lv||l;var p={timeOnPage:Math.round(ac/1e3),scrollDepth:mx},g=w.tallyVitals,m,k;if(g&&!sv){m=g();for(k in m)p[k]=m[k]}G(l?'leave':'engagement',p,hr);ac=0}}
function J(){return L.pathname+L.search+(hs?L.hash:'')}
function V(f){if(ok&&(J()!=pa||f)){X();sv=1;rf=hr;W()}}
function W(){pa=J();hr=L.href;ac=mx=st=0;C();B('pageview',{})}
function Z(){if(ok)return;ok=1;t0=d.hidden?0:Date.now();W();
function Y(m){var o=H[m];if(o)H[m]=function(){var r=o.apply(this,arguments);try{V()}catch(e){}return r}}
Y('pushState');Y('replaceState');O(w,'popstate',function(){V()});if(hs)O(w,'hashchange',function(){V()});
O(d,'visibilitychange',function(){if(d.hidden){X(1);t0=0}else{t0=t0||Date.now();if(lv){lv=0;G('show',{},hr)}}});
O(w,'pagehide',X);
O(w,'scroll',function(){th=th||setTimeout(F(function(){th=0;C()}),250)},{passive:true});
O(d,'click',function(v){for(var a=v.target;a&&!/^a$/i.test(a.nodeName);a=a.parentNode);
if(a&&/^https?:$/.test(a.protocol)){var k=a.hasAttribute('download')||/\.(pdf|zip|dmg|exe|csv|xlsx?|docx?|pptx?|mp[34]|gz|rar|7z|apk|msi|deb|rpm|iso)$/i.test(a.pathname)?'download':a.hostname!=L.hostname?'outbound':0;
if(k)G('click',{url:a.href,kind:k})}},true);
var q=P&&P.q,i;if(q&&q.push)for(i=0;i<q.length;i++)if(q[i])T.track(q[i][0],q[i][1]);
for(i=0;i<pd.length;i++)B(pd[i][0],pd[i][1]);pd=[]}
if(d.prerendering)O(d,'prerenderingchange',Z);else Z()})();
