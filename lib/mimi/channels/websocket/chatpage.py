# The chat page the gateway serves on GET /: one self-contained HTML file (no
# external assets). Model output is shown with textContent only, never as HTML.
# It always connects to the host it was loaded from (no gateway URL parameter).
CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
       "connect-src ws: wss:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")

PAGE = rb"""<!doctype html><html><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><title>MimiClaw</title>
<style>
body{font:15px system-ui,sans-serif;margin:0;display:flex;flex-direction:column;height:100vh;background:#f3f3f5}
header{padding:8px 12px;background:#262630;color:#eee;display:flex;gap:6px;align-items:center;flex-wrap:wrap}
header input{width:9em}#cs{font-size:13px;color:#bbb}
#log{flex:1;overflow-y:auto;padding:12px}
.m{max-width:80%;margin:6px 0;padding:8px 10px;border-radius:10px;white-space:pre-wrap;overflow-wrap:anywhere}
.u{background:#d6e7ff;margin-left:auto}.a{background:#fff}.e{background:#fde0e0}
#st{padding:0 12px;color:#666;min-height:1.3em;font-style:italic}
form{display:flex;gap:8px;padding:8px 12px}textarea{flex:1;font:inherit}
</style></head><body>
<header><b>MimiClaw</b><input id="tok" type="password" placeholder="gateway token" autocomplete="off">
<input id="cid" placeholder="chat id" maxlength="31"><button id="go">Connect</button><span id="cs">offline</span></header>
<div id="log"></div><div id="st"></div>
<form id="f"><textarea id="t" rows="2" placeholder="Message (Enter sends)"></textarea><button>Send</button></form>
<script>
"use strict";
const $=i=>document.getElementById(i),q=new URLSearchParams(location.search),S=localStorage;
let ws=null,live=null;
$('tok').value=q.get('token')||S.getItem('mimi_tok')||'';
$('cid').value=q.get('chat_id')||S.getItem('mimi_cid')||('web'+Math.random().toString(36).slice(2,8));
if(q.has('token'))history.replaceState(null,'',location.pathname);
function add(c,t){const d=document.createElement('div');d.className='m '+c;d.textContent=t;$('log').appendChild(d);d.scrollIntoView();return d;}
function cid(){return $('cid').value.replace(/[^A-Za-z0-9_-]/g,'').slice(0,31);}
function connect(){
 if(ws){ws.onclose=null;ws.close();}
 const tok=$('tok').value.trim();S.setItem('mimi_tok',tok);S.setItem('mimi_cid',cid());
 ws=new WebSocket((location.protocol=='https:'?'wss://':'ws://')+location.host+'/'+(tok?'?token='+encodeURIComponent(tok):''));
 $('cs').textContent='connecting';
 ws.onopen=()=>{$('cs').textContent='online';};
 ws.onclose=e=>{$('cs').textContent='offline ('+e.code+')';$('st').textContent='';};
 ws.onmessage=e=>{let m;try{m=JSON.parse(e.data);}catch(x){return;}
  if(m.type=='status'){let s=m.content=='working'?'MimiClaw is working':String(m.content);
   if(m.step)s+=': '+m.step+(m.detail?' \u2013 '+m.detail:'');$('st').textContent=s+'\u2026';}
  else if(m.type=='usage'){add('a',String(m.text));}
  else if(m.type=='chart'){chart(m);}
  else if(m.type=='partial'){if(live)live.textContent=String(m.content);else live=add('a',String(m.content));}
  else if(m.type=='response'){$('st').textContent='';if(live){live.textContent=String(m.content);live=null;}else add('a',String(m.content));}
  else if(m.type=='error'){$('st').textContent='';add('e',String(m.content));}};
}
function chart(m){const N='http://www.w3.org/2000/svg',W=460,H=190,L=48,T=8,B=22,n=m.lo.length,u=m.unit?' '+m.unit:'';
 const d=add('a',m.name+', last '+m.hours+' h'+(m.count?': min '+m.min[0]+u+', max '+m.max[0]+u+', mean '+m.mean+u:': no readings'));
 if(!m.count||!n)return;
 const s=document.createElementNS(N,'svg');s.setAttribute('viewBox','0 0 '+W+' '+H);s.setAttribute('width',W);s.style.display='block';
 let a=m.min[0],b=m.max[0];if(b-a<1e-9){a-=1;b+=1;}
 const X=i=>L+(i+0.5)*(W-L-6)/n,Y=v=>T+(b-v)*(H-T-B)/(b-a);
 const el=(k,at,t)=>{const e=document.createElementNS(N,k);for(const x in at)e.setAttribute(x,at[x]);if(t!=null)e.textContent=t;s.appendChild(e);};
 el('rect',{x:L,y:T,width:W-L-6,height:H-T-B,fill:'#fafafa',stroke:'#ccc'});
 let p='',q=-9;for(let i=0;i<n;i++)if(m.lo[i]!=null){const y0=Y(m.hi[i]),y1=Y(m.lo[i]);
  p+=(i-q<3?'L':'M')+X(i).toFixed(1)+' '+((y0+y1)/2).toFixed(1);q=i;el('line',{x1:X(i),x2:X(i),y1:y0,y2:y1,stroke:'#1f77b4'});}
 el('path',{d:p,fill:'none',stroke:'#1f77b4','stroke-width':1.5});
 el('text',{x:L-4,y:T+9,'text-anchor':'end','font-size':11},String(+b.toFixed(2)));
 el('text',{x:L-4,y:H-B,'text-anchor':'end','font-size':11},String(+a.toFixed(2)));
 const tm=t=>new Date(t*1000).toLocaleString([],{weekday:'short',hour:'2-digit',minute:'2-digit'});
 el('text',{x:L,y:H-6,'font-size':11},tm(m.from));el('text',{x:W-6,y:H-6,'text-anchor':'end','font-size':11},tm(m.to));
 d.appendChild(s);}
$('go').onclick=connect;
$('f').onsubmit=e=>{e.preventDefault();const t=$('t').value.trim();
 if(!t)return;if(!ws||ws.readyState!=1){add('e','Not connected');return;}
 if(t=='/usage'){ws.send('{"type":"usage"}');$('t').value='';return;}
 const g=t.match(/^\/chart\s+(\S+)(?:\s+([\d.]+))?\s*$/);
 if(g){ws.send(JSON.stringify({type:'chart',name:g[1],hours:g[2]?+g[2]:24}));add('u',t);$('t').value='';return;}
 const m={type:'message',content:t},c=cid();if(c)m.chat_id=c;
 ws.send(JSON.stringify(m));add('u',t);$('t').value='';};
$('t').onkeydown=e=>{if(e.key=='Enter'&&!e.shiftKey){e.preventDefault();$('f').requestSubmit();}};
connect();
</script></body></html>
"""
